server: ibv_ud_pingpong -d rxe_eth1 -g 1 -n 300 -s 1024
client: ibv_ud_pingpong -d rxe_eth1 -g 1 -n 300 -s 1024 10.99.0.1
