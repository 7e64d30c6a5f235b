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
impair "whole" { # WARNING: Impairment on the receiving end only
  host   = host.a
  netdev = "eth1"
  loss   = "1%"
}
impair "scoped" { # ERROR: Overlapping impairments # WARNING: Impairment on the receiving end only
  host   = host.a
  netdev = "eth1"
  delay  = "2ms"
  during = [workload.v]
}
impair "sweep" { # ERROR: Overlapping impairments
  for_each = toset(["1%", "5%"])
  host     = host.b
  netdev   = "eth1"
  loss     = each.value
  during   = [workload.w]
}
