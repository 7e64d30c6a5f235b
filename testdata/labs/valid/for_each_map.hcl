lab "teams" {}

locals {
  teams = {
    red  = { server = "192.0.2.1", client = "192.0.2.2", netdev = "eth1" }
    blue = { server = "192.0.2.3", client = "192.0.2.4", netdev = "ens4" }
  }
}

host "server" {
  for_each = local.teams
  address  = each.value.server
}

host "client" {
  for_each = local.teams
  address  = each.value.client
}

rxe "server" {
  for_each = host.server
  host     = each.value
  netdev   = local.teams[each.key].netdev
}

rxe "client" {
  for_each = local.teams
  host     = host.client[each.key]
  netdev   = each.value.netdev
}

workload "lat" {
  for_each   = local.teams
  tool       = "ib_read_lat"
  server     = rxe.server[each.key]
  client     = rxe.client[each.key]
  duration   = "5s"
  expect {
    condition = result.lat_avg < 100 && result.size > 0
    message   = "team ${each.key}: latency too high"
  }
}

workload "tcp" {
  for_each = local.teams
  tool     = "tcp"
  server   = host.server[each.key]
  client   = host.client[each.key]
}

capture "red_roce" {
  host   = host.server["red"]
  netdev = "eth1"
  filter = "udp port 4791 and (host 192.0.2.1 or host 192.0.2.2)"
  during = [workload.lat["red"]]
}

capture "all_lat" {
  for_each = local.teams
  host     = host.client[each.key]
  netdev   = rxe.client[each.key].netdev
  during   = [workload.lat[each.key], workload.tcp[each.key]]
}
