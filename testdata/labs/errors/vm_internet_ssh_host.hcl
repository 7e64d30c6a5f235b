lab "t" {
  description = "error case: internet is a vm {} setting"
}
host "a" {
  address  = "192.0.2.10"
  internet = true # ERROR: Internet outside a vm block
}
host "b" {
  internet = true # ERROR: Internet outside a vm block
  vm {
    network "data" { address = "10.9.0.2/24" }
  }
}
workload "w" {
  tool   = "tcp"
  server = host.a
  client = host.b
}
