host "server" {
  address = var.server
}

host "client" {
  address = "192.0.2.2"
}

rxe "server" {
  host   = host.server
  netdev = "eth1"
}

rxe "client" {
  host   = host.client
  netdev = "eth1"
}
