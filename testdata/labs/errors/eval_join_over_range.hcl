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
locals {
  a = join(",", range(1000))
  b = join(local.a, range(1000))
  c = join(local.b, range(1000)) # ERROR: Lab evaluation too large
}
