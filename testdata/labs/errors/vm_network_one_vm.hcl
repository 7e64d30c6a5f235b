lab "t" {
  description = "error case: a templated network name spelt one way for the servers and another for the clients"
}
locals {
  students = { ana = "a1", bo = "b2" }
}
host "server" { # WARNING: Network with one VM
  for_each = local.students
  vm {
    network "pair" {
      name    = "pair-${each.key}"
      address = "10.99.0.1/24"
    }
  }
}
host "client" { # WARNING: Network with one VM
  for_each = local.students
  vm {
    network "pair" {
      name    = "pair-${each.value}"
      address = "10.99.0.2/24"
    }
  }
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
workload "w" {
  for_each = local.students
  tool     = "ib_write_bw"
  server   = rxe.server[each.key]
  client   = rxe.client[each.key]
}
