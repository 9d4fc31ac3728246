"""A first look at minigluon: NDArrays, autograd and a few steps of gradient descent.

Fits y = 2*x0 - 3.4*x1 + 4.2 with a linear model written from scratch, the way the
Gluon tutorials start. Runs on the CPU in a second.
"""
import minigluon as mx
from minigluon import autograd, nd


def main():
    mx.random.seed(42)
    true_w, true_b = nd.array([[2.0], [-3.4]]), 4.2
    features = nd.random.normal(shape=(1000, 2))
    labels = nd.dot(features, true_w) + true_b + 0.01 * nd.random.normal(shape=(1000, 1))

    w = nd.random.normal(scale=0.01, shape=(2, 1))
    b = nd.zeros((1,))
    for param in (w, b):
        param.attach_grad()

    lr, batch_size = 0.1, 50
    for epoch in range(5):
        for start in range(0, 1000, batch_size):
            x = features[start:start + batch_size]
            y = labels[start:start + batch_size]
            with autograd.record():
                loss = ((nd.dot(x, w) + b - y) ** 2 / 2).mean()
            loss.backward()
            w[:] = w - lr * w.grad
            b[:] = b - lr * b.grad
        full_loss = ((nd.dot(features, w) + b - labels) ** 2 / 2).mean().asscalar()
        print('epoch %d, loss %.6f' % (epoch, full_loss))
    print('learned w =', w.asnumpy().ravel().round(3), 'b =', round(b.asscalar(), 3))
    print('true    w = [ 2.  -3.4] b = 4.2')


if __name__ == '__main__':
    main()
