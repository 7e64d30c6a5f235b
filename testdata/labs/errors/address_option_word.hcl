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
host "c" {
  address = "restrict" # ERROR: Invalid address
}
host "d" {
  address = "No-PTY" # ERROR: Invalid address
}
