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
locals {
  s0 = join("", [for i in range(1000) : "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"])
  s1 = "${local.s0}${local.s0}${local.s0}${local.s0}${local.s0}${local.s0}${local.s0}${local.s0}"
  s2 = "${local.s1}${local.s1}${local.s1}${local.s1}${local.s1}${local.s1}${local.s1}${local.s1}"
  s3 = "${local.s2}${local.s2}${local.s2}${local.s2}${local.s2}${local.s2}${local.s2}${local.s2}"
  s4 = "${local.s3}${local.s3}${local.s3}${local.s3}${local.s3}${local.s3}${local.s3}${local.s3}" # ERROR: Lab evaluation too large
  s5 = "${local.s4}${local.s4}${local.s4}${local.s4}${local.s4}${local.s4}${local.s4}${local.s4}"
  s6 = "${local.s5}${local.s5}${local.s5}${local.s5}${local.s5}${local.s5}${local.s5}${local.s5}"
}
