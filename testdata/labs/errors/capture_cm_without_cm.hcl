lab "t" {
  description = "a capture named roce-cm over workloads that never send a CM MAD"
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
siw "ia" {
  host   = host.a
  netdev = "eth2"
}
siw "ib" {
  host   = host.b
  netdev = "eth2"
}
workload "plain" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
}
workload "cm" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
  args   = ["-R"]
}
workload "ping" {
  tool   = "rping"
  server = rxe.a
  client = rxe.b
}
workload "overiwarp" {
  tool   = "rping"
  server = siw.ia
  client = siw.ib
}
capture "cm_ok" {
  host   = host.a
  netdev = "eth1"
  filter = "roce-cm"
  during = [workload.cm, workload.ping]
}
capture "cm_plain" {
  host   = host.a
  netdev = "eth1"
  filter = "roce-cm" # WARNING: Capture sees no RDMA-CM traffic
  during = [workload.plain]
}
capture "cm_whole_run" {
  host   = host.b
  netdev = "eth1"
  filter = "roce-cm" # WARNING: Capture sees no RDMA-CM traffic
}
capture "data" {
  host   = host.a
  netdev = "eth1"
  filter = "roce-data"
}
capture "iw" {
  host   = host.a
  netdev = "eth2"
  filter = "iwarp"
  during = [workload.overiwarp]
}
