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
  fits = can([for i in range(1000) : [for j in range(1000) : [for k in range(1000) : k]]]) # ERROR: Lab evaluation too large
}
