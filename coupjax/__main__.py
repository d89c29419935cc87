from coupjax.cli import main

main()
