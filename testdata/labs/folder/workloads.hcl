workload "bw" {
  tool   = "ib_write_bw"
  server = rxe.server
  client = rxe.client
}
