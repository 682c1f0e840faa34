from tuiapp.cli import main

raise SystemExit(main())
