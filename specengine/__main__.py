from specengine.cli import main

main()
