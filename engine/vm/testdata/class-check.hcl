# A one-student class lab: what `rlab check --validate` runs in the real-rxe
# test (engine/vm TestE2EProvision, on its two VMs once provisioned; the test
# points the hosts at them). The student's pair is a for_each instance like
# labs/class.hcl's; the expects say what "the pair works" means, with
# thresholds as variables so the test can plant one that cannot hold.
lab "class-check" {
  description = "One student's VM pair: rxe on both, RDMA WRITE bandwidth and latency with expects"
}

variable "min_write_gbps" {
  type    = number
  default = 0.005
}

variable "max_write_lat_us" {
  type    = number
  default = 5000
}

locals {
  students = {
    ana = { server = "192.0.2.1", client = "192.0.2.2" }
  }
}

host "server" {
  for_each = local.students
  address  = each.value.server
}

host "client" {
  for_each = local.students
  address  = each.value.client
}

rxe "server" {
  for_each = local.students
  host     = host.server[each.key]
  netdev   = "eth1"
}

rxe "client" {
  for_each = local.students
  host     = host.client[each.key]
  netdev   = "eth1"
}

workload "write_bw" {
  for_each   = local.students
  tool       = "ib_write_bw"
  server     = rxe.server[each.key]
  client     = rxe.client[each.key]
  sizes      = ["64KiB"]
  iterations = 300
  expect {
    condition = result.bw_avg > var.min_write_gbps
    message   = "RDMA WRITE bandwidth at or below ${var.min_write_gbps} Gb/s"
  }
}

workload "write_lat" {
  for_each   = local.students
  tool       = "ib_write_lat"
  server     = rxe.server[each.key]
  client     = rxe.client[each.key]
  iterations = 300
  expect {
    condition = result.lat_typical < var.max_write_lat_us
    message   = "RDMA WRITE latency at or above ${var.max_write_lat_us} us"
  }
}
