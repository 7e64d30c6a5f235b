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
host "d" {
  vm {
    network "rdma" {
      address = "10.99.0.2/24"
    }
  }
}
host "e" {
  vm {
    network "rdma" {
      address = "10.99.0.3/24"
    }
  }
}
host "f" { # ERROR: Different MTUs on one network
  vm {
    network "rdma" {
      address = "10.99.0.4/24"
      mtu     = 9000
    }
  }
}
