lab "t" {
  description = "error case"
}
host "a" {
  address = "192.0.2.1"
}
host "b" {
  address = "192.0.2.2"
}
rxe "a" {
  host   = host.a
  netdev = "eth1"
}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
host "c" {
  vm {
    network "rdma" {
      address = "10.99.0.1/24"
    }
  }
}
rxe "c" {
  host   = host.c
  netdev = "eth2" # WARNING: Netdev not on VM
}
