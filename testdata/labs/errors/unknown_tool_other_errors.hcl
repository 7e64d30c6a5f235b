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
workload "w" {
  tool       = "ib_writ_bw" # ERROR: Unsupported tool
  server     = rxe.a
  client     = rxe.rb # ERROR: Reference to undeclared rxe
  sizes      = [4096, "4kib"] # ERROR: Invalid size
  iterations = 0 # ERROR: Invalid value for iterations
  timeout    = "5 minutes" # ERROR: Invalid duration
}
