lab "t" {
  description = "error case: a sensitive value as an instance key"
}
variable "token" {
  type      = string
  sensitive = true
  default   = "s3cret-token"
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
  for_each = toset(["lab-${var.token}"]) # ERROR: Sensitive value in a for_each key
  address  = "192.0.2.3"
}
# A map of names to sensitive values is fine: the key is not secret.
host "d" {
  for_each = { one = var.token }
  address  = "192.0.2.4"
}
