lab "t" {
  description = "error case: dynamic network blocks are refused, pointing at name ="
}
host "server" {
  for_each = toset(["ana", "bo", "cy"])
  vm {
    dynamic "network" { # ERROR: Dynamic blocks not supported
      for_each = [each.key]
      labels   = ["pair-${each.key}"]
      content {
        address = "10.99.0.1/24"
      }
    }
  }
}
host "client" { # WARNING: Network with one VM
  for_each = toset(["ana", "bo", "cy"])
  vm {
    network "pair" {
      name    = "pair-${each.key}"
      address = "10.99.0.2/24"
    }
  }
}
rxe "server" {
  for_each = toset(["ana", "bo", "cy"])
  host     = host.server[each.key]
  netdev   = "eth1" # WARNING: Netdev not on VM
}
rxe "client" {
  for_each = toset(["ana", "bo", "cy"])
  host     = host.client[each.key]
  netdev   = "eth1"
}
workload "w" {
  for_each = toset(["ana", "bo", "cy"])
  tool     = "ib_write_bw"
  server   = rxe.server[each.key]
  client   = rxe.client[each.key]
}
