lab "t" {
  description = "error case"
}
host "a" {
  vm {
    network "data" { address = "10.9.0.1/24" }
  }
}
host "b" {
  vm {
    network "data" { address = "10.9.0.2/24" }
  }
}
workload "w" {
  tool   = "tcp"
  server = host.a
  client = host.b
}
impair "mgmt" { # WARNING: Impairment on the receiving end only
  host   = host.a
  netdev = "eth0" # ERROR: Impairing the management NIC
  loss   = "1%"
}
impair "data" {
  host   = host.b
  netdev = "eth2" # ERROR: Unknown netdev
  loss   = "1%"
}
