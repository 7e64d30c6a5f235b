lab "class" {
  description = "One server per student pair, an exec check on the instructor host"
}

variable "students" {
  type    = map(number) # student -> last octet of the server's address
  default = { ana = 10, ben = 11 }
}

host "instructor" {
  address = "192.0.2.1"
  user    = "teacher"
}

host "server" {
  for_each = var.students
  address  = "192.0.2.${each.value}"
  jump     = "bastion.example.org"
}

host "client" {
  for_each = var.students
  address  = "192.0.2.${each.value + 10}"
  port     = 2222
  jump     = "bastion.example.org"
}

rxe "server" {
  for_each = var.students
  host     = host.server[each.key]
  netdev   = "eth1"
}

rxe "client" {
  for_each = var.students
  host     = host.client[each.key]
  netdev   = "eth1"
}

capture "roce" {
  for_each = var.students
  host     = host.server[each.key]
  netdev   = "eth1"
  filter   = "udp port 4791"
  during   = [workload.send_lat[each.key]]
}

workload "send_lat" {
  for_each = var.students
  tool     = "ib_send_lat"
  server   = rxe.server[each.key]
  client   = rxe.client[each.key]
  sizes    = [64]
}

workload "tcp" {
  for_each = var.students
  tool     = "tcp"
  server   = host.server[each.key]
  client   = host.client[each.key]
  bytes    = "64MiB"
}

workload "uptime" {
  tool    = "exec"
  host    = host.instructor
  command = ["uptime"]
}
