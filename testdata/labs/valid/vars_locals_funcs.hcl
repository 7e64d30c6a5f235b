lab "vars" {
  description = format("%d hosts on %s", var.pairs * 2, var.subnet)
}

variable "pairs" {
  type    = number
  default = 3
  validation {
    condition     = var.pairs >= 1 && var.pairs <= 50
    error_message = "Between 1 and 50 pairs."
  }
}

variable "subnet" {
  type    = string
  default = "10.30.0.0/16"
}

variable "token" {
  type      = string
  default   = "s3cr3t-token"
  sensitive = true
}

variable "opts" {
  type = object({
    sizes = list(string)
    iters = number
  })
  default = {
    sizes = ["1KiB", "4KiB"]
    iters = 500
  }
}

locals {
  indexes = range(var.pairs)
  servers = [for i in local.indexes : cidrhost(var.subnet, 10 + i)]
  clients = [for i in local.indexes : cidrhost(var.subnet, 100 + i)]
  label   = upper(join("-", ["pair", tostring(var.pairs)]))
}

host "server" {
  count   = var.pairs
  address = local.servers[count.index]
  user    = lower(local.label)
  become  = true
}

host "client" {
  count   = var.pairs
  address = local.clients[count.index]
  port    = 2200 + count.index
}

rxe "server" {
  count  = var.pairs
  host   = host.server[count.index]
  netdev = "eth1"
  name   = "rxe${count.index}"
  keep   = true
}

rxe "client" {
  count  = var.pairs
  host   = host.client[count.index]
  netdev = "eth1"
}

workload "bw" {
  count      = var.pairs
  tool       = "ib_send_bw"
  server     = rxe.server[count.index]
  client     = rxe.client[count.index]
  sizes      = var.opts.sizes
  iterations = var.opts.iters
  qps        = 4
  transport  = "UD"
  args       = ["--report_gbits", "-F"]
  timeout    = "90s"
}

workload "check" {
  tool    = "exec"
  host    = host.server[0]
  command = ["sh", "-c", "echo ${var.token} > /dev/null"]
}
