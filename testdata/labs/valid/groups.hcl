# Workloads that run together on shared hosts: an incast (two clients
# into one server, alone and then together) and a ring made with for_each
# (every node writes to the next while it receives from the previous).
lab "groups" {
  description = "incast and ring groups"
}

locals {
  nodes = ["n0", "n1", "n2"]
  addr  = { n0 = "192.0.2.10", n1 = "192.0.2.11", n2 = "192.0.2.12" }
  next  = { n0 = "n1", n1 = "n2", n2 = "n0" }
}

host "node" {
  for_each = toset(local.nodes)
  address  = local.addr[each.key]
  become   = true
}

rxe "node" {
  for_each = toset(local.nodes)
  host     = host.node[each.key]
  netdev   = "eth1"
}

workload "alone" {
  for_each   = toset(["n1", "n2"])
  tool       = "ib_write_bw"
  server     = rxe.node["n0"]
  client     = rxe.node[each.key]
  sizes      = ["64KiB"]
  iterations = 1000
}

workload "incast" {
  for_each   = toset(["n1", "n2"])
  tool       = "ib_write_bw"
  server     = rxe.node["n0"]
  client     = rxe.node[each.key]
  sizes      = ["64KiB"]
  iterations = 1000
}

workload "ring" {
  for_each   = local.next
  tool       = "ib_write_bw"
  server     = rxe.node[each.value]
  client     = rxe.node[each.key]
  sizes      = ["64KiB"]
  iterations = 1000
}

group "incast" {
  workloads = [workload.incast]
}

group "ring" {
  workloads = [workload.ring]
}

capture "roce" {
  for_each = toset(local.nodes)
  host     = host.node[each.key]
  netdev   = "eth1"
  filter   = "udp port 4791"
  during   = [workload.ring]
}
