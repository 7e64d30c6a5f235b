lab "impair" {
  description = "a TCP workload over a link with loss on host a's eth1; host a knows no rxe, so its netdev is checked here"
}

host "a" { address = "192.0.2.10" }
host "b" { address = "192.0.2.11" }

impair "lossy" {
  host   = host.a
  netdev = "eth9"
  loss   = "1%"
}

workload "tcp" {
  tool   = "tcp"
  server = host.a
  client = host.b
}
