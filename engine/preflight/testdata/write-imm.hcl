lab "write-imm" {
  description = "ib_write_bw and ib_write_lat with --write_with_imm, which perftest before 24.01 lacks"
}

host "server" { address = "192.0.2.10" }
host "client" { address = "192.0.2.11" }

rxe "server" {
  host   = host.server
  netdev = "eth1"
}
rxe "client" {
  host   = host.client
  netdev = "eth1"
}

workload "imm_bw" {
  tool   = "ib_write_bw"
  server = rxe.server
  client = rxe.client
  args   = ["--write_with_imm"]
}

workload "imm_lat" {
  tool   = "ib_write_lat"
  server = rxe.server
  client = rxe.client
  args   = ["--write_with_imm"]
}

workload "plain" {
  tool   = "ib_write_bw"
  server = rxe.server
  client = rxe.client
}
