from specengine.entry import main

main()
