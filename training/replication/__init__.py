"""CoupVisor's policy benchmark in pieces (`training.replicate_coupvisor` is its command):
`logs` plays and logs the scripted bots' games, `offline_dqn` trains DQN on the logged
rows, `benchmark` fits BC, evaluates every policy offline and at the seat table
(`coupjax.seat_tables`), and aggregates over seeds.
"""
