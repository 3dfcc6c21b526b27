/** A node of a {@link LinkedQueue}: the queue threads its own links through the node. */
export interface Linked<N> {
  prev: N | undefined;
  next: N | undefined;
}

/**
 * An intrusive doubly linked FIFO: O(1) push, shift and removal from the middle, which an
 * aborted waiting task needs (an array would make every abort O(n)).
 */
export class LinkedQueue<N extends Linked<N>> {
  #head: N | undefined;
  #tail: N | undefined;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get head(): N | undefined {
    return this.#head;
  }

  push(node: N): void {
    node.prev = this.#tail;
    node.next = undefined;
    if (this.#tail === undefined) this.#head = node;
    else this.#tail.next = node;
    this.#tail = node;
    this.#size++;
  }

  shift(): N | undefined {
    const node = this.#head;
    if (node !== undefined) this.remove(node);
    return node;
  }

  /** Unlinks `node`, which must be in this queue (the caller tracks membership). */
  remove(node: N): void {
    if (node.prev === undefined) this.#head = node.next;
    else node.prev.next = node.next;
    if (node.next === undefined) this.#tail = node.prev;
    else node.next.prev = node.prev;
    node.prev = undefined;
    node.next = undefined;
    this.#size--;
  }
}
