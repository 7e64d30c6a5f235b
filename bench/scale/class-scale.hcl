# The scale benchmark's class lab (bench/scale): the shape of labs/class.hcl,
# one server/client pair per student, every pair in parallel, on the netns
# test bed instead of VMs (no RDMA there: an exec and a TCP transfer per
# pair). bench/scale writes the bed's addresses as JSON and runs
#   rlab run --var bed=BED.json [--var jump=user@bastion:22] class-scale.hcl
lab "class-scale" {
  description = "For each student: a host pair, an exec on each and a TCP transfer between them"
}

variable "bed" {
  type        = string
  description = "JSON written by bench/scale: ssh settings and students.{key}.{server,client}"
}

variable "jump" {
  type        = string
  default     = ""
  description = "user@bastion:port when the pairs are behind a bastion"
}

variable "tcp_bytes" {
  type    = string
  default = "1MiB"
}

locals {
  bed      = jsondecode(file(var.bed))
  students = local.bed.students
}

ssh {
  user          = local.bed.user
  identity_file = local.bed.identity_file
  known_hosts   = local.bed.known_hosts
  jump          = var.jump == "" ? null : var.jump
}

host "server" {
  for_each = local.students
  address  = each.value.server
}

host "client" {
  for_each = local.students
  address  = each.value.client
}

workload "hello" {
  for_each = local.students
  tool     = "exec"
  host     = host.server[each.key]
  command  = ["uname", "-r"]
}

workload "tcp" {
  for_each = local.students
  tool     = "tcp"
  server   = host.server[each.key]
  client   = host.client[each.key]
  bytes    = var.tcp_bytes
}
