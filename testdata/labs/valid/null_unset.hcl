# null leaves an optional argument unset, so its default applies, as in
# Terraform: every optional argument of every block accepts it.
lab "null-unset" {
  description = null
}

variable "direct" {
  type    = bool
  default = true
}

variable "port" {
  type    = number
  default = null # a variable may be null; an argument set from it is unset
}

ssh {
  user = "ops"
  port = var.port
  jump = null
}

host "bastion" {
  address = "bastion.example.org"
  become  = null
}

host "a" {
  address = "10.2.0.1"
  jump    = var.direct ? null : host.bastion
  become  = true
  ssh {
    identity_file = null
    known_hosts   = null
  }
}

host "b" {
  address = "10.2.0.2"
  jump    = var.direct ? host.bastion : null
  user    = null
  become  = true
}

host "s" {
  for_each = { x = null, y = 2200 }
  address  = "10.2.1.${each.key == "x" ? 1 : 2}"
  port     = each.value
}

rxe "a" {
  host   = host.a
  netdev = "eth1"
  name   = null
  keep   = null
}

rxe "b" {
  host   = host.b
  netdev = "eth1"
}

workload "write_bw" {
  tool       = "ib_write_bw"
  server     = rxe.a
  client     = rxe.b
  host       = null
  command    = null
  sizes      = null
  iterations = null
  duration   = "5s"
  qps        = null
  transport  = null
  timeout    = null
  repeat     = null
  args       = null
  expect {
    condition = result.bw_avg > 0
    message   = null
  }
}

workload "tcp" {
  tool     = "tcp"
  server   = host.a
  client   = host.b
  bytes    = null
  duration = null
}

workload "uptime" {
  for_each = host.s
  tool     = "exec"
  host     = each.value
  command  = ["uptime"]
  server   = null
  client   = null
}

capture "roce" {
  host     = host.a
  netdev   = "eth1"
  filter   = null
  snaplen  = null
  max_size = null
  during   = null
}
