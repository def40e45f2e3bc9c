import sys

from ecr_retention.cli import main

sys.exit(main())
