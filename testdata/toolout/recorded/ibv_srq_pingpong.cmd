server: ibv_srq_pingpong -d rxe_eth1 -g 1 -n 300
client: ibv_srq_pingpong -d rxe_eth1 -g 1 -n 300 10.99.0.1
