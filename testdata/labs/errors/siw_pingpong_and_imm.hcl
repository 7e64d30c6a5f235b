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
workload "pp" {
  tool   = "ibv_rc_pingpong" # ERROR: Not supported on iWARP
  server = siw.a
  client = siw.b
}
workload "imm" {
  tool   = "ib_write_bw"
  server = siw.a
  client = siw.b
  args   = ["--write_with_imm"] # ERROR: Not supported on iWARP
}
workload "rping" {
  tool   = "rping"
  server = siw.a
  client = siw.b
}
workload "read" {
  tool   = "ib_read_bw"
  server = siw.a
  client = siw.b
}
