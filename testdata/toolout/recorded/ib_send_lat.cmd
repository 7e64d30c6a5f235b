server: ib_send_lat -d rxe_eth1 -x 1 -F --report_gbits -n 200
client: ib_send_lat -d rxe_eth1 -x 1 -F --report_gbits -n 200 10.99.0.1
