"""The Jupyter Server configuration of ``make lab`` and of tests/browser/test_jupyterlab.py (``--config``).

Citations show as "Vaswani et al. (2017)" and the website's attention explorers as a note with the code that draws
them live in JupyterLab; the chapters on disk keep their roles and directives (tools/lab_server.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # lab_server, in the server's process only (not the kernels)

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
c.ServerApp.contents_manager_class = "lab_server.BookContentsManager"
