lab "t" {
  description = "error case"
}
host "a" {
  address = "192.0.2.1"
  user    = "root"
}
host "b" {
  address = "192.0.2.2"
  user    = "root"
}
rxe "a" {
  host   = host.a
  netdev = "eth1"
}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
workload "w" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
}
workload "v" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
}
impair "j" { # WARNING: Impairment on the receiving end only
  host   = host.a
  netdev = "eth1"
  jitter = "1ms" # ERROR: Jitter without delay
  during = [workload.w]
}
impair "r" {
  host    = host.b
  netdev  = "eth1"
  reorder = "25%" # ERROR: Reorder without delay
  during  = [workload.w]
}
impair "e" { # ERROR: Empty impairment
  host   = host.b
  netdev = "eth1"
  during = [workload.v]
}
impair "z" { # WARNING: Impairment on the receiving end only
  host   = host.a
  netdev = "eth1"
  delay  = "0ms"
  jitter = "1ms" # ERROR: Jitter without delay
  during = [workload.v]
}
