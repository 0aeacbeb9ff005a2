"""The file to hand spark-submit, which takes a .py path, not a console script::

    spark-submit --master spark://host:7077 \\
        "$(python -c 'import kdump.spark.submit as m; print(m.__file__)')" \\
        spark verify /shared/kafka-logs --output /shared/audit/findings

The session then takes spark-submit's --master and --conf (kdump.spark.session).
"""

from __future__ import annotations

from kdump.cli import main

if __name__ == "__main__":
    main()
