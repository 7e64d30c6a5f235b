lab "t" {
  description = "error case"
}
host "spare" { # WARNING: Unused host
  address = "192.0.2.9"
}
