lab "t" {
  description = "expect thresholds with units: a wrong unit, a unit of another dimension, a function that does not match the metric"
}
variable "min_bw" {
  default = "20 Mx/s"
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
workload "bw" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
  expect {
    condition = result.bw_avg > gbps("20 Mx/s") # ERROR: Invalid unit
  }
  expect {
    condition = result.bw_avg > gbps(var.min_bw) # ERROR: Invalid unit
  }
  expect {
    condition = result.bw_avg > gbps("5 us") # ERROR: Invalid unit
  }
  expect {
    condition = result.bw_avg > gbps("24.95 MB/sec") # ERROR: Invalid unit
  }
  expect {
    condition = result.bw_avg > usec("5 us") # ERROR: Unit does not match
  }
  expect {
    condition = result.msg_rate >= 0.9 * kpps("761 pps") # ERROR: Unit does not match
  }
  expect {
    condition = result.bw_avg > gbps("20 Mb/s") && result.msg_rate > mpps("700 pps")
  }
  expect {
    condition = result.bw_avg * 1000 > mbps("20 Mb/s") # converted by hand: not told apart, not an error
  }
}
workload "lat" {
  tool   = "ib_send_lat"
  server = rxe.a
  client = rxe.b
  expect {
    condition = (gbps("1 Gb/s")) < result.lat_p99 # ERROR: Unit does not match
  }
  expect {
    condition = result.lat_p99 < usec("1.5 ms") && result.size >= 4096
  }
  expect {
    condition = result.lat_p99 < result.duration # two results: not unit-checked, as before
  }
  expect {
    condition = result.size > usec("3") # ERROR: Invalid unit
  }
}
