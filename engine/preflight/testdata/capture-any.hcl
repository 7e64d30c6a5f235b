lab "capture-any" {
  description = "a capture on tcpdump's pseudo-device any, beside a TCP workload"
}

host "a" { address = "192.0.2.10" }
host "b" { address = "192.0.2.11" }

capture "all" {
  host   = host.a
  netdev = "any"
  filter = "tcp"
}

workload "tcp" {
  tool   = "tcp"
  server = host.a
  client = host.b
}
