# A class lab: one server/client VM pair per student, provisioned by
# Terraform. Save its outputs with
#   terraform output -json > labs/class-terraform-output.json
# and every pair gets Soft-RoCE and the same RDMA exercises, all pairs in
# parallel (pairs share no host), reached through the class bastion.
lab "class" {
  description = "For each student: two VMs, rxe on both, WRITE bandwidth and latency, RC pingpong"
}

variable "terraform_output" {
  type        = string
  default     = "class-terraform-output.json"
  description = "Saved `terraform output -json`, relative to the lab folder"
}

variable "netdev" {
  type    = string
  default = "eth1"
}

# What "this student's pair works" means for `rlab check --validate`. Loose
# enough for VMs under software emulation (QEMU TCG measured ~0.13 Gb/s and
# ~500 us); raise them on real hardware.
variable "min_write_gbps" {
  type    = number
  default = 0.005
}

variable "max_write_lat_us" {
  type    = number
  default = 5000
}

locals {
  tf       = jsondecode(file(var.terraform_output))
  students = local.tf.students.value
}

ssh {
  user        = "student"
  known_hosts = "~/.ssh/known_hosts_class"
  jump        = host.bastion
  become      = true # rxe devices need root: sudo -n
}

host "bastion" {
  address = local.tf.bastion_ip.value
  user    = "instructor"
}

host "server" {
  for_each = local.students
  address  = each.value.server_ip
}

host "client" {
  for_each = local.students
  address  = each.value.client_ip
}

rxe "server" {
  for_each = local.students
  host     = host.server[each.key]
  netdev   = var.netdev
}

rxe "client" {
  for_each = local.students
  host     = host.client[each.key]
  netdev   = var.netdev
}

workload "write_bw" {
  for_each   = local.students
  tool       = "ib_write_bw"
  server     = rxe.server[each.key]
  client     = rxe.client[each.key]
  sizes      = ["64KiB"]
  iterations = 1000
  expect {
    condition = result.bw_avg > var.min_write_gbps
    message   = "RDMA WRITE bandwidth at or below ${var.min_write_gbps} Gb/s: check both VMs' rxe device and the link"
  }
}

workload "write_lat" {
  for_each   = local.students
  tool       = "ib_write_lat"
  server     = rxe.server[each.key]
  client     = rxe.client[each.key]
  iterations = 1000
  expect {
    condition = result.lat_typical < var.max_write_lat_us
    message   = "RDMA WRITE latency at or above ${var.max_write_lat_us} us"
  }
}

workload "pingpong" {
  for_each = local.students
  tool     = "ibv_rc_pingpong"
  server   = rxe.server[each.key]
  client   = rxe.client[each.key]
}
