from browserbay.keeper.daemon import main

main()
