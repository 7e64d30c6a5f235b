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
host "s" {
  for_each = { ana = 10, bo = 11 }
  address  = "192.0.2.${each.value}"
}
rxe "s" {
  host   = host.s["cy"] # ERROR: No such instance
  netdev = "eth1"
}
