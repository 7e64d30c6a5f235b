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
workload "w" { # ERROR: Missing tool
  server = rxe.a
  client = host.bb # ERROR: Reference to undeclared host
  repeat = 0 # ERROR: Invalid value for repeat
}
