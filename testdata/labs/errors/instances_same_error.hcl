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
  for_each = toset(["ana", "bo", "cy"])
  address  = "192.0.2.1"
  port     = 0 # ERROR: Invalid value for port
}
