# ERROR: Missing lab block
host "c" {
  address = "192.0.2.3"
}
