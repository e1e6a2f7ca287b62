import sys

from builder.cli.entry import main

sys.exit(main())
