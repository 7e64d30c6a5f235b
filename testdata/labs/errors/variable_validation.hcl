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
variable "mtu" {
  type    = number
  default = 1400 # ERROR: Invalid value for variable
  validation {
    condition     = contains([1024, 2048, 4096], var.mtu)
    error_message = "RoCE MTU is 1024, 2048 or 4096."
  }
}
