"""``mx.mod``: MXNet's Module API, symbols trained through Gluon's Parameters, Trainer
and kvstores."""
from .base_module import BaseModule
from .bucketing_module import BucketingModule
from .executor_group import DataParallelExecutorGroup
from .module import Module
from .sequential_module import SequentialModule

__all__ = ['BaseModule', 'BucketingModule', 'DataParallelExecutorGroup', 'Module',
           'SequentialModule']
