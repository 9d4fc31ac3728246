"""``mx.optimizer``: the Optimizer base, one module per algorithm, and the Updater."""
from .optimizer import Optimizer, create, register, registered
from .sgd import SGD, ccSGD
from .nag import NAG
from .adam import Adam
from .adamw import AdamW
from .rmsprop import RMSProp
from .adagrad import AdaGrad
from .adadelta import AdaDelta
from .adamax import Adamax
from .nadam import Nadam
from .signum import Signum
from .lamb import LAMB
from .ftml import FTML
from .ftrl import Ftrl
from .sgld import SGLD
from .dcasgd import DCASGD
from .lbsgd import LBSGD
from .lars import LARS
from .test import Test
from .updater import Updater, get_updater

__all__ = ['Optimizer', 'create', 'register', 'registered', 'get_updater', 'Updater', 'SGD', 'NAG',
           'Adam', 'AdamW', 'RMSProp', 'AdaGrad', 'AdaDelta', 'Adamax', 'Nadam', 'Signum', 'LAMB',
           'FTML', 'Ftrl', 'SGLD', 'DCASGD', 'LBSGD', 'LARS', 'Test', 'ccSGD']
