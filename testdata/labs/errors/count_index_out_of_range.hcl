lab "t" {
  description = "error case"
}
host "a" {
  address = "192.0.2.1"
}
host "b" {
  address = "192.0.2.2"
}
rxe "a" {
  host   = host.a
  netdev = "eth1"
}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
host "h" {
  count   = 2
  address = "192.0.2.${count.index + 1}"
}
workload "w" {
  tool    = "exec"
  host    = host.h[2] # ERROR: No such instance
  command = ["true"]
}
