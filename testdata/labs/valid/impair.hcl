lab "impair" {
  description = "a loss sweep on the link of the WRITEs' sender (the client), and a whole-run WAN impairment on the server's, which sends READ data"
}

host "server" {
  address = "192.0.2.10"
  user    = "root"
}
host "client" {
  address = "192.0.2.11"
  user    = "root"
}

rxe "server" {
  host   = host.server
  netdev = "eth1"
}
rxe "client" {
  host   = host.client
  netdev = "eth1"
}

locals {
  loss = ["0", "1", "5"]
}

workload "bw" {
  for_each = toset(local.loss)
  tool     = "ib_write_bw"
  server   = rxe.server
  client   = rxe.client
}

workload "rd" {
  tool   = "ib_read_bw"
  server = rxe.server
  client = rxe.client
}

impair "loss" {
  for_each = toset(local.loss)
  host     = host.client
  netdev   = "eth1"
  loss     = "${each.key}%"
  during   = [workload.bw[each.key]]
}

impair "wan" {
  host      = host.server
  netdev    = "eth1"
  delay     = "2ms"
  jitter    = "500us"
  loss      = "0.1%"
  duplicate = "1%"
  reorder   = "25%"
  corrupt   = "0.01%"
  rate      = "100Mbit"
}
