lab "t" {
  description = "error case"
}
host "a" {
  address = "192.0.2.1"
}
host "b" {
  address = "192.0.2.2"
}
siw "a" {
  host   = host.a
  netdev = "eth1"
}
siw "b" {
  host   = host.b
  netdev = "eth1"
}
workload "send_ud" {
  tool      = "ib_send_bw"
  server    = siw.a
  client    = siw.b
  transport = "UD" # ERROR: Not supported on iWARP
}
workload "write_uc" {
  tool      = "ib_write_lat"
  server    = siw.a
  client    = siw.b
  transport = "UC" # ERROR: Not supported on iWARP
}
workload "write_rc" {
  tool      = "ib_write_bw"
  server    = siw.a
  client    = siw.b
  transport = "RC"
}
