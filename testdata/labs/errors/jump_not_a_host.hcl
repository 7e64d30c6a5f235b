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
  address = "192.0.2.3"
  jump    = "restrict" # ERROR: Invalid jump
}
host "d" {
  address = "192.0.2.4"
  jump    = "u@bastion.example.org:22,u@cert-authority" # ERROR: Invalid jump
}
host "e" {
  address = "192.0.2.5"
  jump    = "u@192.0.2.9 -oProxyCommand=x" # ERROR: Invalid jump
}
host "f" {
  address = "192.0.2.6"
  jump    = "u@bastion.example.org:99999" # ERROR: Invalid jump
}
host "g" {
  address = "192.0.2.7"
  jump    = "@bastion.example.org" # ERROR: Invalid jump
}
host "h" {
  address = "192.0.2.8"
  jump    = "u@[2001:db8::1]:22,ops@bastion.example.org"
}
