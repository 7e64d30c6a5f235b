lab "t" {
  description = "error case"
}
host "a" {
  address = "192.0.2.1"
  user    = "root"
}
host "b" {
  address = "192.0.2.2"
  user    = "root"
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
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
}
workload "v" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
}
impair "p" { # WARNING: Impairment on the receiving end only
  host      = host.a
  netdev    = "eth1"
  loss      = "101%" # ERROR: Invalid loss
  duplicate = "-1%" # ERROR: Invalid duplicate
  corrupt   = "1" # ERROR: Invalid corrupt
  delay     = "-2ms" # ERROR: Invalid delay
  jitter    = "2" # ERROR: Invalid jitter
  rate      = "100Mbitz" # ERROR: Invalid rate
  during    = [workload.w]
}
impair "q" {
  host   = host.b
  netdev = "eth1"
  delay  = "2min" # ERROR: Invalid delay
  during = [workload.v]
}
